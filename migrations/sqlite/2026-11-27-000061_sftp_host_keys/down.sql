DROP TABLE sftp_host_keys;
