-- Macros: the outcome counts and accuracy that every metric reports, defined once.
-- Conventions everywhere: n_scored = correct + wrong + unparsable + truncated; accuracy =
-- n_correct / n_scored; errors are counted apart (n_error) and never folded into wrong; unparsable
-- answers and truncated ones (cut at the token limit before an answer was stated) are scored and
-- not correct.

-- The six outcome counts of the score statuses `s` of a group, as one struct. A macro cannot
-- return several columns, so a query unpacks it with `unnest(status_counts(status))` (which
-- needs an explicit GROUP BY list: DuckDB refuses it beside GROUP BY ALL).
CREATE OR REPLACE MACRO status_counts(s) AS {
    'n_scored': count(*) FILTER (WHERE s <> 'error'),
    'n_correct': count(*) FILTER (WHERE s = 'correct'),
    'n_wrong': count(*) FILTER (WHERE s = 'wrong'),
    'n_unparsable': count(*) FILTER (WHERE s = 'unparsable'),
    'n_truncated': count(*) FILTER (WHERE s = 'truncated'),
    'n_error': count(*) FILTER (WHERE s = 'error')
};

-- The six outcome counts of rows that each hold some (a bin's, a unit's), summed over a group, as
-- one struct of BIGINTs (unpacked, and grouped, as status_counts is).
CREATE OR REPLACE MACRO summed_status_counts(n_scored, n_correct, n_wrong, n_unparsable, n_truncated, n_error) AS {
    'n_scored': CAST(sum(n_scored) AS BIGINT),
    'n_correct': CAST(sum(n_correct) AS BIGINT),
    'n_wrong': CAST(sum(n_wrong) AS BIGINT),
    'n_unparsable': CAST(sum(n_unparsable) AS BIGINT),
    'n_truncated': CAST(sum(n_truncated) AS BIGINT),
    'n_error': CAST(sum(n_error) AS BIGINT)
};

-- Accuracy of n_correct among n_scored; NULL when nothing was scored (only errors).
CREATE OR REPLACE MACRO accuracy(n_correct, n_scored) AS
    CASE WHEN n_scored > 0 THEN n_correct / n_scored END;
