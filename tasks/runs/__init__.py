"""The run lifecycle (``runs`` rows, heartbeats, statuses) and the progress shown while a run works."""
