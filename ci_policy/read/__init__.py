"""Reading a checkout as data: files, diffs, YAML and strict JSON, marker calls, labels, workflows, records.

Never imports or executes checkout code; every other layer reads the checkout through this one."""
