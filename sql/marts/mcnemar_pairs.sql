-- mcnemar_pairs: one row per model, suite, task, category, prompt style and pair of variants.
-- depends_on: paired_tests

-- McNemar test for each pair of variants of a (model, suite, task, category, prompt style),
-- paired within family units; Holm over every variant pair of every task of the same (model,
-- suite) (holm_family).
CREATE OR REPLACE VIEW mcnemar_pairs AS
SELECT model, suite, task, category, prompt_style, side_a AS variant_a, side_b AS variant_b,
       * EXCLUDE (comparison, model, suite, task, category, prompt_style, side_a, side_b)
FROM paired_tests
WHERE comparison = 'variants'
ORDER BY model, suite, task, category, prompt_style, variant_a, variant_b;
