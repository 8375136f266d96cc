-- flip_patterns: one row per model, suite, task, category, prompt style, variant set and pattern.
-- depends_on: flip_patterns_over

CREATE OR REPLACE VIEW flip_patterns AS
SELECT * FROM flip_patterns_over();
