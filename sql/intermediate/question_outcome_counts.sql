-- question_outcome_counts: one row per suite, task, category, prompt style and outcomes of a question's models, with how many questions had them, stored.
-- depends_on: item_outcomes
-- materialised: suite, task, category, prompt_style

-- What paired_outcomes pairs two models on: the questions (item and sample) with the same models
-- (sides), statuses and is_correct counted together (n). Stored so that paired_tests and
-- model_pairs read a few thousand rows instead of grouping every question. Its rows of a group
-- count only that group's questions, so a refresh recomputes only the groups with a changed question.
CREATE OR REPLACE VIEW question_outcome_counts AS
SELECT suite, task, category, prompt_style, models AS sides, statuses, corrects, count(*) AS n
FROM item_outcomes
GROUP BY ALL;
