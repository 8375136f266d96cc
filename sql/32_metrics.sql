-- Marts: the metric views of SPEC §5 over the latest scores of every run.
-- Conventions everywhere: n_scored = correct + wrong + unparsable; accuracy = n_correct /
-- n_scored; errors are counted apart (n_error) and never folded into wrong; unparsable answers
-- are scored and not correct. Parameterised metrics are table macros (breaking_points,
-- invariance_over, flip_patterns_over), each with a view that calls it with its defaults.

-- Accuracy per (model, suite, task, category, variant, prompt style, key entities n) with a
-- Wilson 95% interval: the symmetry paper's accuracy-by-n, for any suite.
CREATE OR REPLACE VIEW accuracy_by_n AS
WITH counts AS (
    SELECT
        model, suite, task, category, variant, prompt_style, key_entities, bin,
        count(*) FILTER (WHERE status <> 'error') AS n_scored,
        count(*) FILTER (WHERE status = 'correct') AS n_correct,
        count(*) FILTER (WHERE status = 'wrong') AS n_wrong,
        count(*) FILTER (WHERE status = 'unparsable') AS n_unparsable,
        count(*) FILTER (WHERE status = 'error') AS n_error
    FROM trial_scores
    GROUP BY ALL
)
SELECT *,
    CASE WHEN n_scored > 0 THEN n_correct / n_scored END AS accuracy,
    wilson_lo(n_correct, n_scored) AS wilson_lo,
    wilson_hi(n_correct, n_scored) AS wilson_hi
FROM counts
ORDER BY model, suite, task, category, variant, prompt_style, key_entities;

-- accuracy_by_bin plus the separately labelled lenient score (lenient_correct, e.g.
-- list_intersection's order-insensitive set match), for tasks whose parser defines one.
CREATE OR REPLACE VIEW lenient_accuracy_by_bin AS
WITH counts AS (
    SELECT
        model, suite, task, variant, prompt_style, bin, min(bin_lo) AS bin_lo,
        count(*) FILTER (WHERE status <> 'error') AS n_scored,
        count(*) FILTER (WHERE status = 'correct') AS n_correct,
        count(*) FILTER (WHERE status = 'wrong') AS n_wrong,
        count(*) FILTER (WHERE status = 'unparsable') AS n_unparsable,
        count(*) FILTER (WHERE status = 'error') AS n_error,
        count(*) FILTER (WHERE lenient_correct) AS n_lenient_correct,
        count(lenient_correct) AS n_lenient_scored
    FROM trial_scores
    GROUP BY model, suite, task, variant, prompt_style, bin
)
SELECT * EXCLUDE (n_lenient_scored),
    CASE WHEN n_scored > 0 THEN n_correct / n_scored END AS accuracy,
    CASE WHEN n_scored > 0 THEN n_lenient_correct / n_scored END AS lenient_accuracy
FROM counts
WHERE n_lenient_scored > 0
ORDER BY model, suite, task, variant, prompt_style, bin_lo;

-- Breaking point per (model, suite, task, variant, prompt style): the first bin (by bin_lo) whose
-- accuracy is below `threshold`; NULL breaking_bin when no tested bin is below it. Bins with no
-- scored trial (only errors) have no accuracy and never break. Counts are over all bins; the
-- breaking_* columns describe the breaking bin. The threshold is a parameter: the view uses the
-- default 0.5; `SELECT * FROM breaking_points(0.7)` (or the configured sweep.breaking_threshold,
-- as the report does) uses another.
CREATE OR REPLACE MACRO breaking_points(threshold := 0.5) AS TABLE
WITH per_task AS (
    SELECT model, suite, task, variant, prompt_style,
           count(*) AS n_bins,
           CAST(sum(n_scored) AS BIGINT) AS n_scored, CAST(sum(n_correct) AS BIGINT) AS n_correct,
           CAST(sum(n_wrong) AS BIGINT) AS n_wrong, CAST(sum(n_unparsable) AS BIGINT) AS n_unparsable,
           CAST(sum(n_error) AS BIGINT) AS n_error
    FROM accuracy_by_bin
    GROUP BY ALL
),
first_break AS (
    SELECT model, suite, task, variant, prompt_style, bin, bin_lo, accuracy, n_scored
    FROM accuracy_by_bin
    WHERE accuracy < threshold
    QUALIFY row_number() OVER (PARTITION BY model, suite, task, variant, prompt_style ORDER BY bin_lo) = 1
)
SELECT
    t.model, t.suite, t.task, t.variant, t.prompt_style, CAST(threshold AS DOUBLE) AS threshold,
    b.bin AS breaking_bin, b.bin_lo AS breaking_bin_lo, b.accuracy AS breaking_accuracy,
    b.n_scored AS breaking_n_scored,
    t.n_bins, t.n_scored, t.n_correct, t.n_wrong, t.n_unparsable, t.n_error
FROM per_task t
LEFT JOIN first_break b USING (model, suite, task, variant, prompt_style)
ORDER BY t.model, t.suite, t.task, t.variant, t.prompt_style;

CREATE OR REPLACE VIEW breaking_point AS
SELECT * FROM breaking_points();

-- Invariance@k and Consistency@k per (model, suite, task, category, prompt style) over a variant
-- set V of size k (family_units_over: V = variant_list, else every variant present). Only
-- complete units (a scored answer on every variant of V) count: invariance_at_k = share of them
-- correct on all k variants; consistency_at_k = share whose k parsed answers are all the same
-- answer (family_answer_pairs: equal canonical answers, math symbolically; correct answers all
-- agree with the gold), known as soon as the scores are stored. Units are (family, seed,
-- sample): repeats are pooled; n_families counts distinct families. n_excluded counts incomplete units (n_excluded_error of
-- them because of an error). Trial counts (n_scored ...) are over complete units, n_error over
-- all. pool_tasks := true pools the tasks and categories of a suite that share one variant list
-- (task and category read '(all)'), as GeoRepEval reports one row per model; for_run := '<run id>'
-- restricts to one run's trials.
CREATE OR REPLACE MACRO invariance_over(variant_list := NULL, pool_tasks := false, for_run := NULL) AS TABLE
SELECT
    model, suite,
    CASE WHEN pool_tasks THEN '(all)' ELSE task END AS task,
    CASE WHEN pool_tasks THEN '(all)' ELSE category END AS category,
    prompt_style, k, variants,
    count(*) AS n_units,
    count(*) FILTER (WHERE complete) AS n_complete,
    count(*) FILTER (WHERE NOT complete) AS n_excluded,
    count(*) FILTER (WHERE NOT complete AND n_error > 0) AS n_excluded_error,
    count(DISTINCT family_id) FILTER (WHERE complete) AS n_families,
    CAST(coalesce(sum(n_scored) FILTER (WHERE complete), 0) AS BIGINT) AS n_scored,
    CAST(coalesce(sum(n_correct) FILTER (WHERE complete), 0) AS BIGINT) AS n_correct,
    CAST(coalesce(sum(n_wrong) FILTER (WHERE complete), 0) AS BIGINT) AS n_wrong,
    CAST(coalesce(sum(n_unparsable) FILTER (WHERE complete), 0) AS BIGINT) AS n_unparsable,
    CAST(sum(n_error) AS BIGINT) AS n_error,
    count(*) FILTER (WHERE invariant) AS n_invariant,
    count(*) FILTER (WHERE consistent) AS n_consistent,
    CASE WHEN count(*) FILTER (WHERE complete) > 0
         THEN count(*) FILTER (WHERE invariant) / count(*) FILTER (WHERE complete) END AS invariance_at_k,
    CASE WHEN count(*) FILTER (WHERE complete) > 0
         THEN count(*) FILTER (WHERE consistent) / count(*) FILTER (WHERE complete) END AS consistency_at_k
FROM family_units_over(variant_list := variant_list, for_run := for_run)
GROUP BY ALL
ORDER BY model, suite, task, category, prompt_style, k;

CREATE OR REPLACE VIEW invariance AS
SELECT * FROM invariance_over();

CREATE OR REPLACE VIEW invariance_by_suite AS
SELECT * FROM invariance_over(pool_tasks := true);

-- Flip patterns over an ordered variant set (family_units_over; geometry: euclid, coord, vector
-- gives CCC ... WWW): per group, the number and share of complete units with each pattern
-- (C correct, W not correct), n_with_unparsable of them with an unparsable answer. For k <= 4
-- every pattern is listed, absent ones with n = 0. Ordered by the number of W, then pattern.
CREATE OR REPLACE MACRO flip_patterns_over(variant_list := NULL, pool_tasks := false, for_run := NULL) AS TABLE
WITH units AS (
    SELECT * REPLACE (
        CASE WHEN pool_tasks THEN '(all)' ELSE task END AS task,
        CASE WHEN pool_tasks THEN '(all)' ELSE category END AS category)
    FROM family_units_over(variant_list := variant_list, for_run := for_run)
),
groups AS (
    SELECT model, suite, task, category, prompt_style, k, variants,
           count(*) FILTER (WHERE complete) AS n_complete,
           count(*) FILTER (WHERE NOT complete) AS n_excluded,
           CAST(sum(n_error) AS BIGINT) AS n_error
    FROM units
    GROUP BY ALL
),
observed AS (
    SELECT model, suite, task, category, prompt_style, variants, pattern,
           count(*) AS n, count(*) FILTER (WHERE n_unparsable > 0) AS n_with_unparsable
    FROM units
    WHERE complete
    GROUP BY ALL
),
enumerated AS (
    SELECT model, suite, task, category, prompt_style, variants,
           array_to_string(list_transform(range(k), lambda i: CASE WHEN (p >> (k - 1 - i)) & 1 = 0 THEN 'C' ELSE 'W' END), '') AS pattern
    FROM (SELECT *, unnest(range(1 << k)) AS p FROM groups WHERE k <= 4)
),
patterns AS (
    SELECT model, suite, task, category, prompt_style, variants, pattern FROM enumerated
    UNION
    SELECT model, suite, task, category, prompt_style, variants, pattern FROM observed
)
SELECT
    g.model, g.suite, g.task, g.category, g.prompt_style, g.k, g.variants, pt.pattern,
    length(pt.pattern) - length(replace(pt.pattern, 'W', '')) AS n_not_correct,
    coalesce(o.n, 0) AS n,
    coalesce(o.n, 0) / g.n_complete AS share,
    coalesce(o.n_with_unparsable, 0) AS n_with_unparsable,
    g.n_complete, g.n_excluded, g.n_error
FROM groups g
JOIN patterns pt USING (model, suite, task, category, prompt_style, variants)
LEFT JOIN observed o USING (model, suite, task, category, prompt_style, variants, pattern)
WHERE g.n_complete > 0
ORDER BY g.model, g.suite, g.task, g.category, g.prompt_style, n_not_correct, pt.pattern;

CREATE OR REPLACE VIEW flip_patterns AS
SELECT * FROM flip_patterns_over();

CREATE OR REPLACE VIEW flip_patterns_by_suite AS
SELECT * FROM flip_patterns_over(pool_tasks := true);

-- Paired outcomes for McNemar tests, one row per answer to the same question on either side:
-- comparison 'variants' pairs two variants of one family unit (family, seed, sample) for one
-- model; comparison 'models' pairs two models on the same trial (item and sample), all variants
-- together, with model NULL. side_a / side_b name what is compared (variants or models). Every
-- pair of sides present in a group is listed, and an answer with no partner on the other side
-- (the unit lacks that variant, or the other model never answered that item) is kept with the
-- missing side NULL, so paired_tests can count it as unpaired instead of losing it.
CREATE OR REPLACE VIEW paired_outcomes AS
WITH variant_sides AS (
    SELECT DISTINCT model, suite, task, category, prompt_style, variant, variant_rank FROM family_trials
),
variant_pairs AS (
    SELECT a.model, a.suite, a.task, a.category, a.prompt_style, a.variant AS side_a, b.variant AS side_b
    FROM variant_sides a
    JOIN variant_sides b USING (model, suite, task, category, prompt_style)
    WHERE (a.variant_rank, a.variant) < (b.variant_rank, b.variant)
),
variant_units AS (
    SELECT DISTINCT model, suite, task, category, prompt_style, family_id, seed, sample_idx FROM family_trials
),
model_sides AS (
    SELECT DISTINCT suite, task, category, prompt_style, model FROM family_trials
),
model_pairs AS (
    SELECT a.suite, a.task, a.category, a.prompt_style, a.model AS side_a, b.model AS side_b
    FROM model_sides a
    JOIN model_sides b USING (suite, task, category, prompt_style)
    WHERE a.model < b.model
),
model_trials AS (
    SELECT DISTINCT suite, task, category, prompt_style, item_id, sample_idx FROM family_trials
)
SELECT 'variants' AS comparison, p.model, p.suite, p.task, p.category, p.prompt_style, p.side_a, p.side_b,
       a.status AS status_a, b.status AS status_b, a.is_correct AS correct_a, b.is_correct AS correct_b
FROM variant_pairs p
JOIN variant_units u USING (model, suite, task, category, prompt_style)
LEFT JOIN family_trials a
  ON a.model = u.model AND a.suite = u.suite AND a.task = u.task AND a.category = u.category
 AND a.prompt_style = u.prompt_style AND a.family_id = u.family_id AND a.seed = u.seed
 AND a.sample_idx = u.sample_idx AND a.variant = p.side_a
LEFT JOIN family_trials b
  ON b.model = u.model AND b.suite = u.suite AND b.task = u.task AND b.category = u.category
 AND b.prompt_style = u.prompt_style AND b.family_id = u.family_id AND b.seed = u.seed
 AND b.sample_idx = u.sample_idx AND b.variant = p.side_b
WHERE a.trial_id IS NOT NULL OR b.trial_id IS NOT NULL
UNION ALL
SELECT 'models', NULL, p.suite, p.task, p.category, p.prompt_style, p.side_a, p.side_b,
       a.status, b.status, a.is_correct, b.is_correct
FROM model_pairs p
JOIN model_trials t USING (suite, task, category, prompt_style)
LEFT JOIN family_trials a
  ON a.item_id = t.item_id AND a.sample_idx = t.sample_idx AND a.model = p.side_a
 AND a.suite = t.suite AND a.task = t.task AND a.category = t.category AND a.prompt_style = t.prompt_style
LEFT JOIN family_trials b
  ON b.item_id = t.item_id AND b.sample_idx = t.sample_idx AND b.model = p.side_b
 AND b.suite = t.suite AND b.task = t.task AND b.category = t.category AND b.prompt_style = t.prompt_style
WHERE a.trial_id IS NOT NULL OR b.trial_id IS NOT NULL;

-- McNemar test per pair of sides within (comparison, model, suite, task, category, prompt style),
-- over the pairs where both answers are scored: b = correct on side_a only, c = correct on side_b
-- only; exact two-sided binomial p-value. n_error counts pairs left out because either answer is
-- an error; n_unpaired_a / n_unpaired_b count answers (any status) of one side with no partner on
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
        count(*) FILTER (WHERE status_a <> 'error' AND status_b <> 'error') AS n_pairs,
        count(*) FILTER (WHERE status_a <> 'error' AND status_b <> 'error' AND correct_a AND correct_b) AS n_both_correct,
        count(*) FILTER (WHERE status_a <> 'error' AND status_b <> 'error' AND correct_a AND NOT correct_b) AS b,
        count(*) FILTER (WHERE status_a <> 'error' AND status_b <> 'error' AND NOT correct_a AND correct_b) AS c,
        count(*) FILTER (WHERE status_a <> 'error' AND status_b <> 'error' AND NOT correct_a AND NOT correct_b) AS n_both_not_correct,
        count(*) FILTER (WHERE status_a = 'wrong' AND status_b <> 'error') AS n_wrong_a,
        count(*) FILTER (WHERE status_b = 'wrong' AND status_a <> 'error') AS n_wrong_b,
        count(*) FILTER (WHERE status_a = 'unparsable' AND status_b <> 'error') AS n_unparsable_a,
        count(*) FILTER (WHERE status_b = 'unparsable' AND status_a <> 'error') AS n_unparsable_b,
        count(*) FILTER (WHERE status_a IS NOT NULL AND status_b IS NOT NULL
                           AND (status_a = 'error' OR status_b = 'error')) AS n_error,
        count(*) FILTER (WHERE status_b IS NULL) AS n_unpaired_a,
        count(*) FILTER (WHERE status_a IS NULL) AS n_unpaired_b
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
    n_both_correct, b, c, n_both_not_correct, n_wrong_a, n_wrong_b, n_unparsable_a, n_unparsable_b, n_error,
    n_unpaired_a + n_unpaired_b AS n_unpaired, n_unpaired_a, n_unpaired_b,
    p_value,
    CASE WHEN p_value IS NOT NULL THEN least(1.0, max((n_tests - holm_rank + 1) * p_value) OVER (
        PARTITION BY holm_family ORDER BY holm_rank NULLS LAST
        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) END AS p_holm,
    holm_family, n_tests
FROM ranked;

-- McNemar test for each pair of variants of a (model, suite, task, category, prompt style),
-- paired within family units; Holm over every variant pair of every task of the same (model,
-- suite) (holm_family).
CREATE OR REPLACE VIEW mcnemar_pairs AS
SELECT model, suite, task, category, prompt_style, side_a AS variant_a, side_b AS variant_b,
       * EXCLUDE (comparison, model, suite, task, category, prompt_style, side_a, side_b)
FROM paired_tests
WHERE comparison = 'variants'
ORDER BY model, suite, task, category, prompt_style, variant_a, variant_b;

-- McNemar test for each pair of models on the same trials, per (suite, task, category, prompt
-- style), all variants together; Holm over every model pair of every task of the same suite
-- (holm_family).
CREATE OR REPLACE VIEW model_pairs AS
SELECT suite, task, category, prompt_style, side_a AS model_a, side_b AS model_b,
       * EXCLUDE (comparison, model, suite, task, category, prompt_style, side_a, side_b)
FROM paired_tests
WHERE comparison = 'models'
ORDER BY suite, task, category, prompt_style, model_a, model_b;

-- Linear probability fits of correctness (1 correct, 0 wrong or unparsable; errors left out) on
-- each surface feature alone, per model and suite, for ad-hoc looks: slope, intercept and R².
-- The inferential version is the logistic regression of tasks/stats.py (logistic_regression).
CREATE OR REPLACE VIEW surface_regression_linear AS
WITH scored AS (
    SELECT model, suite, status, n_tokens, symbol_density, n_numbers,
           CASE WHEN status = 'correct' THEN 1.0 ELSE 0.0 END AS y
    FROM trial_scores
)
SELECT
    model, suite,
    count(*) FILTER (WHERE status <> 'error') AS n_scored,
    count(*) FILTER (WHERE status = 'correct') AS n_correct,
    count(*) FILTER (WHERE status = 'wrong') AS n_wrong,
    count(*) FILTER (WHERE status = 'unparsable') AS n_unparsable,
    count(*) FILTER (WHERE status = 'error') AS n_error,
    regr_slope(y, n_tokens) FILTER (WHERE status <> 'error') AS slope_n_tokens,
    regr_intercept(y, n_tokens) FILTER (WHERE status <> 'error') AS intercept_n_tokens,
    regr_r2(y, n_tokens) FILTER (WHERE status <> 'error') AS r2_n_tokens,
    regr_slope(y, symbol_density) FILTER (WHERE status <> 'error') AS slope_symbol_density,
    regr_intercept(y, symbol_density) FILTER (WHERE status <> 'error') AS intercept_symbol_density,
    regr_r2(y, symbol_density) FILTER (WHERE status <> 'error') AS r2_symbol_density,
    regr_slope(y, n_numbers) FILTER (WHERE status <> 'error') AS slope_n_numbers,
    regr_intercept(y, n_numbers) FILTER (WHERE status <> 'error') AS intercept_n_numbers,
    regr_r2(y, n_numbers) FILTER (WHERE status <> 'error') AS r2_n_numbers
FROM scored
GROUP BY model, suite
ORDER BY model, suite;

-- What re-scoring changed: for each trial, every score row next to the one before it (ordered
-- by created_at) where the status or the predicted answer differs. flipped: correctness changed
-- (correct before and not now, or the reverse); is_latest: the row is the trial's current score.
-- Filter on previous_scorer_version / scorer_version to compare two versions.
CREATE OR REPLACE VIEW score_changes AS
WITH history AS (
    SELECT
        trial_id, item_id, model, sample_idx, run_id, scorer_version, status, predicted, created_at,
        lag(scorer_version) OVER w AS previous_scorer_version,
        lag(status) OVER w AS previous_status,
        lag(predicted) OVER w AS previous_predicted,
        lag(created_at) OVER w AS previous_created_at,
        row_number() OVER (PARTITION BY trial_id ORDER BY created_at DESC) = 1 AS is_latest
    FROM all_scores
    WINDOW w AS (PARTITION BY trial_id ORDER BY created_at)
)
SELECT
    h.trial_id, h.model, i.suite, i.task, i.variant, i.prompt_style, h.item_id, h.sample_idx, i.gold,
    h.previous_scorer_version, h.scorer_version, h.previous_status, h.status,
    h.previous_predicted, h.predicted,
    (h.previous_status = 'correct') <> (h.status = 'correct') AS flipped,
    h.previous_created_at, h.created_at AS changed_at, h.run_id, h.is_latest
FROM history h
JOIN items i USING (item_id)
WHERE h.previous_status IS NOT NULL
  AND (h.previous_status IS DISTINCT FROM h.status OR h.previous_predicted IS DISTINCT FROM h.predicted)
ORDER BY h.created_at, h.trial_id;
