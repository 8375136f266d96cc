-- item_outcomes: one row per question (item and sample) of family_trials, with each model's outcome, stored.
-- depends_on: family_trials
-- materialised: family_id

-- The models that answered a question (the same item_id and sample_idx) in family_trials, in
-- model order, with their statuses and is_correct in the same order: what paired_outcomes pairs
-- two models on. Stored so that the model pairs read a row per question instead of grouping every
-- trial (at 1,000,000 trials that grouping was most of paired_tests' 7 s of CPU).
CREATE OR REPLACE VIEW item_outcomes AS
SELECT suite, task, category, prompt_style, family_id, item_id, sample_idx,
       list_transform(answers, lambda a: a.m) AS models,
       list_transform(answers, lambda a: a.s) AS statuses,
       list_transform(answers, lambda a: a.c) AS corrects
FROM (
    -- one sorted list of structs, which each column reads (cheaper than three ORDER BY aggregates)
    SELECT suite, task, category, prompt_style, family_id, item_id, sample_idx,
           list_sort(list({'m': model, 's': status, 'c': is_correct})) AS answers
    FROM family_trials
    GROUP BY suite, task, category, prompt_style, family_id, item_id, sample_idx
);
