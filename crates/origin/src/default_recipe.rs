//! The recipe served at start and after a restart: every path, 200 after 100 ms, gzipped HTML that
//! shows how to post a recipe.

use crate::recipe::{parse_upload, Recipe};

const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>loadlab origin simulator</title></head>
<body>
<h1>loadlab origin simulator</h1>
<p>This is the default recipe: every path answers 200 after 100 ms with this page. Post your own
recipe to replace it, for example:</p>
<pre>curl -X POST -d '{"route": "/news", "random_content": "200kb",
  "headers": {"content-encoding": "gzip"},
  "stages": [{"at": 0, "status": 200, "latency": "100ms"}]}' http://HOST/_admin/add_recipe</pre>
<p>See the loaded recipes at <code>/_admin/current_recipe</code> and each route's status at
<code>/_admin/routes_status</code>.</p>
</body>
</html>
"#;

pub(crate) fn recipe() -> Recipe {
    let json = serde_json::json!({
        "route": "/*",
        "body": PAGE,
        "headers": {"cache-control": "public, max-age=30", "content-encoding": "gzip"},
        "stages": [{"at": 0, "status": 200, "latency": "100ms"}],
    });
    parse_upload(json.to_string().as_bytes()).expect("the default recipe is valid").remove(0)
}
