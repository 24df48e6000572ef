DROP TABLE request_file_uploads;
DROP TABLE request_file_sources;
DROP TABLE request_files;
