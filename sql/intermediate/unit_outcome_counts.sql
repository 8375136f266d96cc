-- unit_outcome_counts: one row per model, suite, task, category, prompt style and outcomes of a family unit's variants, with how many units had them, stored.
-- depends_on: family_units
-- materialised: model, suite, task, category, prompt_style

-- What paired_outcomes pairs two variants on: the family units with the same variants (sides),
-- statuses and is_correct counted together (n). Stored so that paired_tests and mcnemar_pairs
-- read a few thousand rows instead of grouping every unit (6,000,000 at 10,000,000 responses). Its
-- rows of a group count only that group's units, so a refresh recomputes only the groups with a
-- changed unit.
CREATE OR REPLACE VIEW unit_outcome_counts AS
SELECT model, suite, task, category, prompt_style, variants AS sides, statuses, corrects, count(*) AS n
FROM family_units
GROUP BY ALL;
