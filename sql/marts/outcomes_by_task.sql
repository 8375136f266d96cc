-- outcomes_by_task: one row per model, suite and task.
-- depends_on: trial_scores

-- The outcome counts of the report's "errors and unparsable answers" section.
CREATE OR REPLACE VIEW outcomes_by_task AS
SELECT model, suite, task, unnest(status_counts(status))
FROM trial_scores
GROUP BY model, suite, task
ORDER BY model, suite, task;
