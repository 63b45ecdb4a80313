import { Row } from "./row";

export interface Store {
  get(id: string): Row | undefined;
  put(row: Row): void;
}

export type RowId = string;

export enum Mode { Read, Write }

// In-memory store used by tests.
export class MemoryStore implements Store {
  private rows = new Map<string, Row>();

  constructor(private readonly name: string) {}

  get(id: string): Row | undefined {
    return this.rows.get(id);
  }

  put(row: Row): void {
    this.rows.set(row.id, row);
  }
}

export const openStore = (name: string): Store => new MemoryStore(name);

export function closeStore(store: Store): void {
  console.log("closed", store);
}
