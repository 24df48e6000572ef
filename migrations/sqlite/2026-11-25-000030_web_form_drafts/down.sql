DROP TABLE web_form_drafts;
