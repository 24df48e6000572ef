-- Most sign-ins name no device: index only the families that have one, so a grant without a
-- device writes one index entry less. Lookups by device (`device_id = ?`) still use it.
DROP INDEX token_families_device;
CREATE INDEX token_families_device ON token_families(device_id) WHERE device_id IS NOT NULL;
