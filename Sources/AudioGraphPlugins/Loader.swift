// Plugin loader (issue 4).
