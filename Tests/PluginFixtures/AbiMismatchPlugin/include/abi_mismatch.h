/* ABI-mismatch test plugin (issue 4). */
