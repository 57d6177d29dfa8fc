"""rlguard's runtime half (being written)."""
