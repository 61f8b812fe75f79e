"""Plain data and pure functions shared by every layer (stdlib and orjson only)."""
