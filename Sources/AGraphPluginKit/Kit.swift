// Swift kit for writing plugins (issue 4).
