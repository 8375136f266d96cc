"""Models: routes, calls and their limits, claims, provider batch jobs, cost and the embedded models."""
