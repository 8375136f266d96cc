-- invariance: one row per model, suite, task, category, prompt style and variant set (every variant present).
-- depends_on: invariance_over

CREATE OR REPLACE VIEW invariance AS
SELECT * FROM invariance_over();
