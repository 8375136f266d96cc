"""Items: generating them from the suites, their surface features, and validating them before storage."""
