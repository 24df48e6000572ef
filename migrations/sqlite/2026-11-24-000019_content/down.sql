DROP TABLE jobs;
DROP TABLE comments;
DROP TABLE uploads;
DROP TABLE object_members;
DROP TABLE file_versions;
DROP TABLE objects;
DROP TABLE blobs;
