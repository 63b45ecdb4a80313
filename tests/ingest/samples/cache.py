"""A tiny metadata cache."""
import time

TTL_SECONDS = 30


# Build the cache key for one table.
def cache_key(schema: str, table: str) -> str:
    return f"{schema}.{table}"


class MetadataCache:
    """Keeps table metadata for TTL_SECONDS."""

    hits = 0

    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, dict]] = {}

    @property
    def size(self) -> int:
        return len(self._entries)

    # Drop one entry so the next lookup reloads it.
    def invalidateMetadataRuntime(self, key: str) -> None:
        self._entries.pop(key, None)

    class Stats:
        def reset(self) -> None:
            self.count = 0


async def refresh_all(cache: MetadataCache) -> None:
    await cache.reload()


if __name__ == "__main__":
    print(cache_key("a", "b"))
