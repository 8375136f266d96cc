-- family_cell_classes(...): one row per model, suite, task, prompt style and class of families (the same correct and scored trials in every variant and bin), with its families counted, of the one (model, suite) part_model, part_suite.
-- depends_on: scoped_trials

-- What the bootstraps of accuracy and of accuracy gaps resample (tasks/analysis/bootstrap.py), by
-- class: a resample sums its families' counts, so families whose correct and scored trials are
-- the same in every variant and bin (`cells`: one struct per variant and bin the family has
-- trials in, sorted) are interchangeable. An accuracy cell's classes and a pair of variants'
-- classes are projections of these (bootstrap.py merges the classes that project alike), so one
-- aggregate of the part's trials serves both and Python reads a row per class (a few hundred per
-- (model, suite) at 10,000,000 responses) instead of one per family. The list is sorted after it
-- is built: an ORDER BY inside the aggregate cost three times as much.
CREATE OR REPLACE MACRO family_cell_classes(part_model, part_suite, for_run := NULL) AS TABLE
WITH per_cell AS (
    -- correct and scored trials as status_counts counts them (sql/macros/status_counts.sql), the
    -- two alone: the macro's six counts cost a third more at 10,000,000
    SELECT model, suite, task, prompt_style, family_id, variant, bin,
           count(*) FILTER (WHERE status = 'correct') AS c_correct, count(*) FILTER (WHERE status <> 'error') AS c_scored
    FROM scoped_trials(for_run := for_run)
    WHERE model IS NOT DISTINCT FROM part_model AND suite IS NOT DISTINCT FROM part_suite
    GROUP BY model, suite, task, prompt_style, family_id, variant, bin
),
per_family AS (
    SELECT model, suite, task, prompt_style, family_id,
           list({'variant': variant, 'bin': bin, 'c_correct': c_correct, 'c_scored': c_scored}) AS cells
    FROM per_cell
    GROUP BY model, suite, task, prompt_style, family_id
)
SELECT model, suite, task, prompt_style, list_sort(cells) AS cells, count(*) AS n_families
FROM per_family
GROUP BY model, suite, task, prompt_style, list_sort(cells);
