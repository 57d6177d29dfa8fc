"""``rlguard fix``: apply what rules proposed, verify it in memory, then write atomically."""
