-- family_unit_counts_of(...): family units counted by kind over a variant set: the stored family_unit_counts, or family_unit_counts_over.
-- depends_on: family_unit_counts, family_unit_counts_over

-- Every variant of every run (both arguments NULL) is the stored family_unit_counts; a variant
-- list or a run, family_unit_counts_over's own rows (computed from the family units).
CREATE OR REPLACE MACRO family_unit_counts_of(variant_list := NULL, for_run := NULL) AS TABLE
SELECT * FROM family_unit_counts WHERE variant_list IS NULL AND for_run IS NULL
UNION ALL
SELECT * FROM family_unit_counts_over(variant_list := variant_list, for_run := for_run)
WHERE variant_list IS NOT NULL OR for_run IS NOT NULL;
