-- family_pair_classes(...): one row per model, suite, task, prompt style, pair of its variants (variant_a < variant_b by name) and class of families (the same correct and scored counts on each), with its families counted and their outcome counts summed, of the one (model, suite) part_model, part_suite.
-- depends_on: family_outcome_counts

-- What the bootstrap of accuracy gaps resamples (tasks/analysis/bootstrap.py), by class: per family
-- of a (model, suite, task, prompt style), its correct and scored trials on each variant of a pair
-- (every bin), over the families with a row on either variant (0 on a variant it has no row on).
-- A resample draws families once for both variants, so the class is the family's four counts
-- (c_correct_a, c_scored_a, c_correct_b, c_scored_b). The pair is ordered by name here; the
-- bootstrap orients it by variant order.
CREATE OR REPLACE MACRO family_pair_classes(part_model, part_suite, for_run := NULL) AS TABLE
WITH per_variant AS (
    SELECT model, suite, task, prompt_style, family_id, variant,
           unnest(summed_status_counts(n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error))
    FROM family_outcome_counts(for_run := for_run)
    WHERE model IS NOT DISTINCT FROM part_model AND suite IS NOT DISTINCT FROM part_suite
    GROUP BY model, suite, task, prompt_style, family_id, variant
),
variants AS (SELECT DISTINCT model, suite, task, prompt_style, variant FROM per_variant),
pairs AS (
    SELECT a.model, a.suite, a.task, a.prompt_style, a.variant AS variant_a, b.variant AS variant_b
    FROM variants a JOIN variants b
    ON a.model IS NOT DISTINCT FROM b.model AND a.suite IS NOT DISTINCT FROM b.suite
       AND a.task IS NOT DISTINCT FROM b.task AND a.prompt_style IS NOT DISTINCT FROM b.prompt_style
       AND a.variant < b.variant
),
sides AS (  -- each family's counts on a variant of a pair, marked as the pair's a or b side
    SELECT p.model, p.suite, p.task, p.prompt_style, p.variant_a, p.variant_b, f.family_id,
           f.variant = p.variant_a AS is_a, f.* EXCLUDE (model, suite, task, prompt_style, variant, family_id)
    FROM pairs p JOIN per_variant f
    ON p.model IS NOT DISTINCT FROM f.model AND p.suite IS NOT DISTINCT FROM f.suite
       AND p.task IS NOT DISTINCT FROM f.task AND p.prompt_style IS NOT DISTINCT FROM f.prompt_style
       AND f.variant IN (p.variant_a, p.variant_b)
),
per_family AS (
    SELECT model, suite, task, prompt_style, variant_a, variant_b, family_id,
           CAST(sum(CASE WHEN is_a THEN n_correct ELSE 0 END) AS BIGINT) AS c_correct_a,
           CAST(sum(CASE WHEN is_a THEN n_scored ELSE 0 END) AS BIGINT) AS c_scored_a,
           CAST(sum(CASE WHEN is_a THEN 0 ELSE n_correct END) AS BIGINT) AS c_correct_b,
           CAST(sum(CASE WHEN is_a THEN 0 ELSE n_scored END) AS BIGINT) AS c_scored_b,
           summed_status_counts(n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error) AS counts
    FROM sides
    GROUP BY model, suite, task, prompt_style, variant_a, variant_b, family_id
)
SELECT model, suite, task, prompt_style, variant_a, variant_b, c_correct_a, c_scored_a, c_correct_b, c_scored_b,
       count(*) AS n_families,
       unnest(summed_status_counts(counts.n_scored, counts.n_correct, counts.n_wrong, counts.n_unparsable,
                                   counts.n_truncated, counts.n_error))
FROM per_family
GROUP BY model, suite, task, prompt_style, variant_a, variant_b, c_correct_a, c_scored_a, c_correct_b, c_scored_b;
