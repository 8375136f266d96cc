-- model_pairs: one row per suite, task, category, prompt style and pair of models.
-- depends_on: paired_tests

-- McNemar test for each pair of models on the same trials, per (suite, task, category, prompt
-- style), all variants together; Holm over every model pair of every task of the same suite
-- (holm_family).
CREATE OR REPLACE VIEW model_pairs AS
SELECT suite, task, category, prompt_style, side_a AS model_a, side_b AS model_b,
       * EXCLUDE (comparison, model, suite, task, category, prompt_style, side_a, side_b)
FROM paired_tests
WHERE comparison = 'models'
ORDER BY suite, task, category, prompt_style, model_a, model_b;
