-- Macros: the order of variants, used for flip patterns, pair orientation and the regression's
-- reference variant (tasks/analysis/stats.py reads variant_order()).

-- Variants with a conventional order come first in that order (GeoRepEval's representations);
-- every other variant sorts after them by name.
CREATE OR REPLACE MACRO variant_order() AS ['euclid', 'coord', 'vector'];

CREATE OR REPLACE MACRO variant_rank(v) AS coalesce(list_position(variant_order(), v), 1000000);
