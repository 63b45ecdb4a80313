import { sleep } from "./time.js";

const LIMIT = 5;

/**
 * Retry an async call with exponential backoff.
 */
export async function withRetry(fn, attempts = LIMIT) {
  for (let i = 0; i < attempts; i++) {
    try { return await fn(); } catch (e) { await sleep(2 ** i * 100); }
  }
}

export const jitter = (ms) => ms + Math.random() * 10;

class Queue {
  // Pending jobs.
  items = [];

  push(job) {
    this.items.push(job);
  }

  get length() {
    return this.items.length;
  }
}

export default Queue;
