// Example plugin (issue 4).
