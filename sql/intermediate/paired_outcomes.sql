-- paired_outcomes: one row per pair of answers to the same question on either side of a comparison.
-- depends_on: family_trials

-- Paired outcomes for McNemar tests, one row per answer to the same question on either side:
-- comparison 'variants' pairs two variants of one family unit (family, seed, sample) for one
-- model; comparison 'models' pairs two models on the same trial (item and sample), all variants
-- together, with model NULL. side_a / side_b name what is compared (variants or models). Every
-- pair of sides present in a group is listed, and an answer with no partner on the other side
-- (the unit lacks that variant, or the other model never answered that item) is kept with the
-- missing side NULL, so paired_tests can count it as unpaired instead of losing it.
CREATE OR REPLACE VIEW paired_outcomes AS
-- family_trials is read by every part below; materialised once, not derived anew for each.
WITH ft AS MATERIALIZED (
    SELECT model, suite, task, category, prompt_style, family_unit, sample_idx, variant, variant_rank,
           item_id, trial_id, status, is_correct
    FROM family_trials
),
variant_sides AS (
    SELECT DISTINCT model, suite, task, category, prompt_style, variant, variant_rank FROM ft
),
variant_pairs AS (
    SELECT a.model, a.suite, a.task, a.category, a.prompt_style, a.variant AS side_a, b.variant AS side_b
    FROM variant_sides a
    JOIN variant_sides b USING (model, suite, task, category, prompt_style)
    WHERE (a.variant_rank, a.variant) < (b.variant_rank, b.variant)
),
variant_units AS (
    SELECT DISTINCT model, suite, task, category, prompt_style, family_unit FROM ft
),
model_sides AS (
    SELECT DISTINCT suite, task, category, prompt_style, model FROM ft
),
model_side_pairs AS (
    SELECT a.suite, a.task, a.category, a.prompt_style, a.model AS side_a, b.model AS side_b
    FROM model_sides a
    JOIN model_sides b USING (suite, task, category, prompt_style)
    WHERE a.model < b.model
),
model_trials AS (
    SELECT DISTINCT suite, task, category, prompt_style, item_id, sample_idx FROM ft
)
SELECT 'variants' AS comparison, p.model, p.suite, p.task, p.category, p.prompt_style, p.side_a, p.side_b,
       a.status AS status_a, b.status AS status_b, a.is_correct AS correct_a, b.is_correct AS correct_b
FROM variant_pairs p
JOIN variant_units u USING (model, suite, task, category, prompt_style)
LEFT JOIN ft a ON a.family_unit = u.family_unit AND a.variant = p.side_a
LEFT JOIN ft b ON b.family_unit = u.family_unit AND b.variant = p.side_b
WHERE a.trial_id IS NOT NULL OR b.trial_id IS NOT NULL
UNION ALL
SELECT 'models', NULL, p.suite, p.task, p.category, p.prompt_style, p.side_a, p.side_b,
       a.status, b.status, a.is_correct, b.is_correct
FROM model_side_pairs p
JOIN model_trials t USING (suite, task, category, prompt_style)
LEFT JOIN ft a
  ON a.item_id = t.item_id AND a.sample_idx = t.sample_idx AND a.model = p.side_a
 AND a.suite = t.suite AND a.task = t.task AND a.category = t.category AND a.prompt_style = t.prompt_style
LEFT JOIN ft b
  ON b.item_id = t.item_id AND b.sample_idx = t.sample_idx AND b.model = p.side_b
 AND b.suite = t.suite AND b.task = t.task AND b.category = t.category AND b.prompt_style = t.prompt_style
WHERE a.trial_id IS NOT NULL OR b.trial_id IS NOT NULL;
