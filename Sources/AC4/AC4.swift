// AC-4 sync-frame reader (issue 4).
