DROP TABLE web_forms;
