-- paired_tests: one row per comparison and pair of sides within (model, suite, task, category, prompt style).
-- depends_on: paired_outcomes

-- McNemar test per pair of sides within (comparison, model, suite, task, category, prompt style),
-- over the pairs where both answers are scored (each row of paired_outcomes counts n pairs): b =
-- correct on side_a only, c = correct on side_b only; exact two-sided binomial p-value. n_error
-- counts pairs left out because either answer is an error; n_unpaired_a / n_unpaired_b count answers (any status) of one side with no partner on
-- the other (n_unpaired is their sum), so nothing leaves the test silently. A pair of sides with
-- no scored pair (n_pairs = 0) is no test: p_value NULL, outside every Holm family.
-- Holm's step-down adjustment runs over the family of tests a reader compares at once, named in
-- holm_family: for variant pairs, every variant pair of every task, category and prompt style of
-- one (model, suite); for model pairs, every model pair of every task, category and prompt style
-- of one suite. n_tests is the size of that family.
CREATE OR REPLACE VIEW paired_tests AS
WITH pairs AS (
    SELECT
        comparison, model, suite, task, category, prompt_style, side_a, side_b,
        n_pairs_where(n, status_a <> 'error' AND status_b <> 'error') AS n_pairs,
        n_pairs_where(n, status_a <> 'error' AND status_b <> 'error' AND correct_a AND correct_b) AS n_both_correct,
        n_pairs_where(n, status_a <> 'error' AND status_b <> 'error' AND correct_a AND NOT correct_b) AS b,
        n_pairs_where(n, status_a <> 'error' AND status_b <> 'error' AND NOT correct_a AND correct_b) AS c,
        n_pairs_where(n, status_a <> 'error' AND status_b <> 'error' AND NOT correct_a AND NOT correct_b) AS n_both_not_correct,
        n_pairs_where(n, status_a = 'wrong' AND status_b <> 'error') AS n_wrong_a,
        n_pairs_where(n, status_b = 'wrong' AND status_a <> 'error') AS n_wrong_b,
        n_pairs_where(n, status_a = 'unparsable' AND status_b <> 'error') AS n_unparsable_a,
        n_pairs_where(n, status_b = 'unparsable' AND status_a <> 'error') AS n_unparsable_b,
        n_pairs_where(n, status_a = 'truncated' AND status_b <> 'error') AS n_truncated_a,
        n_pairs_where(n, status_b = 'truncated' AND status_a <> 'error') AS n_truncated_b,
        n_pairs_where(n, status_a IS NOT NULL AND status_b IS NOT NULL
                           AND (status_a = 'error' OR status_b = 'error')) AS n_error,
        n_pairs_where(n, status_b IS NULL) AS n_unpaired_a,
        n_pairs_where(n, status_a IS NULL) AS n_unpaired_b
    FROM paired_outcomes
    GROUP BY ALL
),
tested AS (
    SELECT *,
        CASE WHEN n_pairs > 0 THEN mcnemar_exact_p(b, c) END AS p_value,
        CASE WHEN comparison = 'variants' THEN 'variant pairs of model ' || model || ' in suite ' || suite
             ELSE 'model pairs in suite ' || suite END AS holm_family
    FROM pairs
),
ranked AS (
    SELECT *,
        CASE WHEN p_value IS NOT NULL THEN row_number() OVER fam END AS holm_rank,
        count(p_value) OVER (PARTITION BY holm_family) AS n_tests
    FROM tested
    WINDOW fam AS (PARTITION BY holm_family ORDER BY p_value NULLS LAST, task, category, prompt_style, side_a, side_b)
)
SELECT
    comparison, model, suite, task, category, prompt_style, side_a, side_b, n_pairs,
    CASE WHEN n_pairs > 0 THEN (n_both_correct + b) / n_pairs END AS accuracy_a,
    CASE WHEN n_pairs > 0 THEN (n_both_correct + c) / n_pairs END AS accuracy_b,
    n_both_correct, b, c, n_both_not_correct, n_wrong_a, n_wrong_b, n_unparsable_a, n_unparsable_b, n_truncated_a, n_truncated_b, n_error,
    n_unpaired_a + n_unpaired_b AS n_unpaired, n_unpaired_a, n_unpaired_b,
    p_value,
    CASE WHEN p_value IS NOT NULL THEN least(1.0, max((n_tests - holm_rank + 1) * p_value) OVER (
        PARTITION BY holm_family ORDER BY holm_rank NULLS LAST
        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) END AS p_holm,
    holm_family, n_tests
FROM ranked;
