-- scoped_trials(...): one row per scored trial (trial_scores) of every run, or only of `for_run`'s trials.
-- depends_on: trial_scores, run_trials

-- The trials the statistics read (tasks/analysis/stats.py), in the scope of one computation:
-- every run (for_run NULL: trial_scores itself) or one run's trials.
CREATE OR REPLACE MACRO scoped_trials(for_run := NULL) AS TABLE
SELECT * FROM trial_scores WHERE for_run IS NULL
UNION ALL
SELECT * FROM trial_scores
WHERE for_run IS NOT NULL AND trial_id IN (SELECT trial_id FROM run_trials WHERE run_id = for_run);
