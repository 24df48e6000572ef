DROP TABLE external_dls;
DROP TABLE contact_items;
DROP TABLE contacts;
