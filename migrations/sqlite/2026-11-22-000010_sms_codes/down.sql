DROP TABLE sms_codes;
DROP TABLE sms_two_factor;
