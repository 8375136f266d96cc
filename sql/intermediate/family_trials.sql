-- Intermediate, family level: one answer per family unit and variant, and the pairs of them.
--
-- A family unit is one family as one model answered it under one prompt style, generator seed
-- and repeat: (model, suite, task, category, prompt_style, family_id, seed, sample_idx). The
-- prompt style is never a variant of a family (suites cross it with every variant), so units of
-- different prompt styles are never compared with each other.
-- family_trials: one row per family unit and variant.
-- family_answer_pairs: one row per family unit and pair of its variants.

-- One scored trial per family unit and variant. Several trials can map to one unit only when the
-- same model name was run with different settings or generator versions; the latest scored one
-- stands for the unit. parser_version is the matching rule the score used (e.g. 'math/2').
-- answer_key is the canonical answer stored with the final step's parse (tasks.scoring.parse.answer_key:
-- 3/2, 1.5 and 1.50 are all '1.5'; sqrt(20) is '2*sqrt(5)'); a parse row written before that
-- column existed falls back to the parsed value (integer and text values are their own keys; math
-- answers of parser math/1 need `invarbench rescore` to get theirs). NULL when nothing parsed.
CREATE OR REPLACE VIEW family_trials AS
SELECT
    ts.model, ts.suite, ts.task, ts.category, ts.prompt_style, ts.family_id, i.seed, ts.sample_idx,
    ts.variant, variant_rank(ts.variant) AS variant_rank, ts.trial_id, ts.item_id, ts.status,
    ts.status = 'correct' AS is_correct, ts.predicted,
    CASE WHEN ts.predicted IS NOT NULL THEN coalesce(p.canonical, ts.predicted) END AS answer_key,
    ts.answer_type, regexp_extract(ts.scorer_version, '\+(.+)$', 1) AS parser_version, ts.scored_at
FROM trial_scores ts
JOIN items i USING (item_id)
LEFT JOIN parses p ON p.response_id = json_extract_string(ts.response_ids, '$[#-1]')
QUALIFY row_number() OVER (
    PARTITION BY ts.model, ts.suite, ts.task, ts.category, ts.prompt_style, ts.family_id, i.seed,
                 ts.sample_idx, ts.variant
    ORDER BY ts.scored_at DESC, ts.trial_id
) = 1;

-- Pairs of answers of one family unit (variant_a ranked before variant_b), with whether they are
-- the same answer (macro same_answer, sql/macros/answers.sql; NULL when either side is an error).
-- Everything here is stored at parse and score time, so the verdict is known right after any
-- sweep, import or rescore.
CREATE OR REPLACE VIEW family_answer_pairs AS
SELECT
    a.model, a.suite, a.task, a.category, a.prompt_style, a.family_id, a.seed, a.sample_idx,
    a.variant AS variant_a, b.variant AS variant_b, a.trial_id AS trial_id_a, b.trial_id AS trial_id_b, a.answer_type,
    a.status AS status_a, b.status AS status_b, a.is_correct AS correct_a, b.is_correct AS correct_b,
    a.predicted AS predicted_a, b.predicted AS predicted_b,
    same_answer(a.status, b.status, a.is_correct, b.is_correct, a.answer_key, b.answer_key) AS same_answer
FROM family_trials a
JOIN family_trials b
  ON a.model = b.model AND a.suite = b.suite AND a.task = b.task AND a.category = b.category
 AND a.prompt_style = b.prompt_style AND a.family_id = b.family_id AND a.seed = b.seed
 AND a.sample_idx = b.sample_idx
 AND (a.variant_rank, a.variant) < (b.variant_rank, b.variant);

