-- family_units_of(...): one row per family unit over a variant set: the stored family_units, or family_unit_rows.
-- depends_on: family_units, family_unit_rows

-- Every variant of every run (both arguments NULL) is the stored family_units; a variant list or a
-- run, family_unit_rows' own rows. A table macro rather than a CTE: family_units_over reads it
-- twice, and a CTE read twice is copied once, which costs more than two scans of the stored table.
CREATE OR REPLACE MACRO family_units_of(variant_list := NULL, for_run := NULL) AS TABLE
SELECT * FROM family_units WHERE variant_list IS NULL AND for_run IS NULL
UNION ALL
SELECT * FROM family_unit_rows(variant_list := variant_list, for_run := for_run)
WHERE variant_list IS NOT NULL OR for_run IS NOT NULL;
