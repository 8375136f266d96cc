-- paired_outcomes: one row per pair of sides of a comparison and pair of outcomes, with how many answer pairs had them.
-- depends_on: unit_outcome_counts, question_outcome_counts

-- Paired outcomes for McNemar tests: the number n of answers to the same question on either side
-- with each pair of outcomes (status_a, status_b, correct_a, correct_b). Comparison 'variants'
-- pairs two variants of one family unit (family, seed, sample) for one model (family_units);
-- comparison 'models' pairs two models on the same trial (item and sample), all variants
-- together, with model NULL (item_outcomes). side_a / side_b name what is compared (variants or
-- models). Every pair of sides present in a group is listed, and an answer with no partner on the
-- other side (the unit lacks that variant, or the other model never answered that item) is kept
-- with the missing side NULL, so paired_tests can count it as unpaired instead of losing it.
-- Units and questions with the same outcomes are counted together before they are paired
-- (unit_outcome_counts, question_outcome_counts, both stored): the pairs are then a few thousand
-- rows, not one per answer.
CREATE OR REPLACE VIEW paired_outcomes AS
WITH variant_sides AS (
    SELECT DISTINCT model, suite, task, category, prompt_style, unnest(sides) AS variant FROM unit_outcome_counts
),
variant_pairs AS (
    SELECT a.model, a.suite, a.task, a.category, a.prompt_style, a.variant AS side_a, b.variant AS side_b
    FROM variant_sides a
    JOIN variant_sides b USING (model, suite, task, category, prompt_style)
    WHERE (variant_rank(a.variant), a.variant) < (variant_rank(b.variant), b.variant)
),
model_sides AS (
    SELECT DISTINCT suite, task, category, prompt_style, unnest(sides) AS model FROM question_outcome_counts
),
model_side_pairs AS (
    SELECT a.suite, a.task, a.category, a.prompt_style, a.model AS side_a, b.model AS side_b
    FROM model_sides a
    JOIN model_sides b USING (suite, task, category, prompt_style)
    WHERE a.model < b.model
),
sided AS (
    SELECT 'variants' AS comparison, p.*, o.statuses, o.corrects, o.n,
           list_position(o.sides, p.side_a) AS at_a, list_position(o.sides, p.side_b) AS at_b
    FROM variant_pairs p
    JOIN unit_outcome_counts o USING (model, suite, task, category, prompt_style)
    UNION ALL
    SELECT 'models', NULL, p.*, o.statuses, o.corrects, o.n,
           list_position(o.sides, p.side_a), list_position(o.sides, p.side_b)
    FROM model_side_pairs p
    JOIN question_outcome_counts o USING (suite, task, category, prompt_style)
)
SELECT comparison, model, suite, task, category, prompt_style, side_a, side_b,
       statuses[at_a] AS status_a, statuses[at_b] AS status_b, corrects[at_a] AS correct_a, corrects[at_b] AS correct_b,
       CAST(sum(n) AS BIGINT) AS n
FROM sided
WHERE at_a IS NOT NULL OR at_b IS NOT NULL
GROUP BY ALL;
