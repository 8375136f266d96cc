-- A family unit is one family as one model answered it under one prompt style, generator seed
-- and repeat: the struct family_unit {model, suite, task, category, prompt_style, family_id, seed,
-- sample_idx}, defined here only; every view that compares or counts units joins and groups on it.
-- The prompt style is never a variant of a family (suites cross it with every variant), so units
-- of different prompt styles are never compared with each other.
-- family_trials: one row per family unit and variant, with the unit's fields and the struct family_unit.
-- depends_on: items, latest_parses, trial_scores
-- materialised: family_id, model

-- One scored trial per family unit and variant. Several trials can map to one unit only when the
-- same model name was run with different settings or generator versions; the latest scored one
-- stands for the unit. parser_version is the matching rule the score used (e.g. 'math/2').
-- answer_key is the canonical answer stored with the final step's parse (tasks.scoring.parse.answer_key:
-- 3/2, 1.5 and 1.50 are all '1.5'; sqrt(20) is '2*sqrt(5)'); a parse row written before that
-- column existed falls back to the parsed value (integer and text values are their own keys; math
-- answers of parser math/1 need `invarbench rescore` to get theirs). NULL when nothing parsed.
CREATE OR REPLACE VIEW family_trials AS
SELECT unnest(family_unit), * EXCLUDE (family_unit), family_unit
FROM (
    SELECT
        {'model': ts.model, 'suite': ts.suite, 'task': ts.task, 'category': ts.category,
         'prompt_style': ts.prompt_style, 'family_id': ts.family_id, 'seed': i.seed,
         'sample_idx': ts.sample_idx} AS family_unit,
        ts.variant, variant_rank(ts.variant) AS variant_rank, ts.trial_id, ts.item_id, ts.status,
        ts.status = 'correct' AS is_correct, ts.predicted,
        CASE WHEN ts.predicted IS NOT NULL THEN coalesce(p.canonical, ts.predicted) END AS answer_key,
        ts.answer_type, regexp_extract(ts.scorer_version, '\+(.+)$', 1) AS parser_version, ts.scored_at
    FROM trial_scores ts
    JOIN items i USING (item_id)
    LEFT JOIN latest_parses p ON p.response_id = json_extract_string(ts.response_ids, '$[#-1]')
)
QUALIFY row_number() OVER (PARTITION BY family_unit, variant ORDER BY scored_at DESC, trial_id) = 1;
