-- Marts: accuracy and outcome counts over the latest scores (intermediate/trial_scores.sql), at
-- each grain a reader or the pipeline asks for. Counts and accuracy are the macros of
-- macros/status_counts.sql; intervals are 95% Wilson intervals (macros/wilson.sql).
-- accuracy_by_bin: one row per model, suite, task, variant, prompt style and bin.
-- accuracy_by_task_bin: one row per model, suite, task and bin (variants and prompt styles together).
-- run_accuracy_by_bin: one row per run, model, suite, task and bin, over the run's trials only.
-- accuracy_by_n: one row per model, suite, task, category, variant, prompt style and key entities n.
-- lenient_accuracy_by_bin: one row per model, suite, task, variant, prompt style and bin of a task
-- whose parser defines a lenient score.
-- outcomes_by_task: one row per model, suite and task.

-- Errors and unparsable answers are counted apart and are not in the accuracy denominator's
-- "wrong": accuracy = n_correct / n_scored, where n_scored = correct + wrong + unparsable.
CREATE OR REPLACE VIEW accuracy_by_bin AS
WITH counts AS (
    SELECT model, suite, task, variant, prompt_style, bin, min(bin_lo) AS bin_lo, unnest(status_counts(status))
    FROM trial_scores
    GROUP BY model, suite, task, variant, prompt_style, bin
)
SELECT
    *,
    accuracy(n_correct, n_scored) AS accuracy,
    wilson_lo(n_correct, n_scored) AS wilson_lo,
    wilson_hi(n_correct, n_scored) AS wilson_hi
FROM counts
ORDER BY model, suite, task, variant, prompt_style, bin_lo;

-- The accuracy-against-key-entities figure of the report: all variants and prompt styles of a
-- task together.
CREATE OR REPLACE VIEW accuracy_by_task_bin AS
WITH counts AS (
    SELECT model, suite, task, bin, min(bin_lo) AS bin_lo, unnest(status_counts(status))
    FROM trial_scores
    GROUP BY model, suite, task, bin
)
SELECT
    *,
    accuracy(n_correct, n_scored) AS accuracy,
    wilson_lo(n_correct, n_scored) AS wilson_lo,
    wilson_hi(n_correct, n_scored) AS wilson_hi
FROM counts
ORDER BY model, suite, task, bin_lo;

-- The sweep's headline: a run's own trials (those answered from the ledger included), all
-- variants and prompt styles together.
CREATE OR REPLACE VIEW run_accuracy_by_bin AS
WITH counts AS (
    SELECT r.run_id, ts.model, ts.suite, ts.task, ts.bin, min(ts.bin_lo) AS bin_lo, unnest(status_counts(ts.status))
    FROM trial_scores ts
    JOIN (SELECT DISTINCT run_id, trial_id FROM run_trials) r USING (trial_id)
    GROUP BY r.run_id, ts.model, ts.suite, ts.task, ts.bin
)
SELECT
    *,
    accuracy(n_correct, n_scored) AS accuracy,
    wilson_lo(n_correct, n_scored) AS wilson_lo,
    wilson_hi(n_correct, n_scored) AS wilson_hi
FROM counts
ORDER BY run_id, model, suite, task, bin_lo;

-- The symmetry paper's accuracy-by-n, for any suite.
CREATE OR REPLACE VIEW accuracy_by_n AS
WITH counts AS (
    SELECT model, suite, task, category, variant, prompt_style, key_entities, bin, unnest(status_counts(status))
    FROM trial_scores
    GROUP BY model, suite, task, category, variant, prompt_style, key_entities, bin
)
SELECT *,
    accuracy(n_correct, n_scored) AS accuracy,
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
        unnest(status_counts(status)),
        count(*) FILTER (WHERE lenient_correct) AS n_lenient_correct,
        count(lenient_correct) AS n_lenient_scored
    FROM trial_scores
    GROUP BY model, suite, task, variant, prompt_style, bin
)
SELECT * EXCLUDE (n_lenient_scored),
    accuracy(n_correct, n_scored) AS accuracy,
    accuracy(n_lenient_correct, n_scored) AS lenient_accuracy
FROM counts
WHERE n_lenient_scored > 0
ORDER BY model, suite, task, variant, prompt_style, bin_lo;

-- The outcome counts of the report's "errors and unparsable answers" section.
CREATE OR REPLACE VIEW outcomes_by_task AS
SELECT model, suite, task, unnest(status_counts(status))
FROM trial_scores
GROUP BY model, suite, task
ORDER BY model, suite, task;
