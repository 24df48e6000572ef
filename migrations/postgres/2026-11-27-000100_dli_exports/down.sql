DROP INDEX file_versions_creator;
DROP TABLE dli_exports;
