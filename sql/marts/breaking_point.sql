-- breaking_point: one row per model, suite, task, variant and prompt style, at threshold 0.5.
-- depends_on: breaking_points

CREATE OR REPLACE VIEW breaking_point AS
SELECT * FROM breaking_points();
