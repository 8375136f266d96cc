-- family_unit_counts: one row per model, suite, task, category, prompt style and kind of family unit, over every variant present (family_unit_counts_over()), stored.
-- depends_on: family_unit_counts_over
-- materialised: model, suite, prompt_style

-- Stored so that invariance, invariance_by_suite, flip_patterns and flip_patterns_by_suite read a
-- few thousand rows instead of every family unit (at 10,000,000 responses, 6,000,000 units: 2-4 s
-- of CPU per mart). The key is the coarsest group those marts report (by suite, tasks pooled):
-- the variant set of a group and the pooled distinct families depend on every unit of it, so a
-- refresh recomputes a (model, suite, prompt style) whole when one of its units changed.
CREATE OR REPLACE VIEW family_unit_counts AS
SELECT * FROM family_unit_counts_over();
