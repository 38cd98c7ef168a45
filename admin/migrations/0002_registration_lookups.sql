-- Registration (protocol §9) finds a plugin's selector by name and a selector's rule by name
-- under the admin's write lock: indexed lookups instead of reading every row.
CREATE INDEX selector_plugin_name ON selector (plugin_id, name);
CREATE INDEX rule_selector_name ON rule (selector_id, name);
