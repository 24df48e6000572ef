DROP INDEX token_families_device;
CREATE INDEX token_families_device ON token_families(device_id);
