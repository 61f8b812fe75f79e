"""Data the test suite reads, kept in the repository so a fresh clone tests on its own."""
