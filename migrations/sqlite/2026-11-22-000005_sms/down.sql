DROP TABLE sms_messages;
