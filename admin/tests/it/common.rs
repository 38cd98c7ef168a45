//! Helpers shared by the integration tests: a served admin on port 0 and a logged-in client.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long any single wait in a test may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(10);

/// An admin served on a free port.
pub(crate) struct Served {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

impl Served {
    pub(crate) async fn start(config: admin::Config) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(admin::serve(listener, config, async move {
            let _ = stopped.await;
        }));
        Served {
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Shuts the server down and waits until it has stopped.
    pub(crate) async fn stop(mut self) {
        self.stop.take().unwrap().send(()).unwrap();
        let task = self.task.take().unwrap();
        tokio::time::timeout(DEADLINE, task)
            .await
            .expect("server stops in time")
            .unwrap()
            .unwrap();
    }
}

/// A client holding a token for `served`.
pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Client {
    pub(crate) async fn login(served: &Served) -> Client {
        let http = reqwest::Client::builder()
            .timeout(DEADLINE)
            .build()
            .unwrap();
        let base = served.url("");
        let body: Value = http
            .post(format!("{base}/platform/login"))
            .json(&json!({"userName": "admin", "password": "123456"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let token = body["data"]["token"]
            .as_str()
            .expect("login gives a token")
            .to_owned();
        Client { http, base, token }
    }

    /// A request to `path` carrying the token.
    pub(crate) fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .header("X-Access-Token", &self.token)
    }

    pub(crate) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("X-Access-Token", &self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }
}

/// A valid divide selector body.
pub(crate) fn selector_body(name: &str) -> Value {
    json!({
        "pluginId": "5", "name": name, "type": 1, "matchMode": 0, "sort": 1,
        "enabled": true, "loged": false, "continued": true, "matchRestful": false,
        "handle": "[{\"upstreamUrl\":\"127.0.0.1:8080\",\"protocol\":\"http://\",\"weight\":50}]",
        "selectorConditions": [
            {"paramType": "uri", "operator": "startsWith", "paramName": "/", "paramValue": "/http/"}
        ]
    })
}

/// A valid divide rule body for `selector_id`.
pub(crate) fn rule_body(selector_id: &str, name: &str) -> Value {
    json!({
        "selectorId": selector_id, "name": name, "matchMode": 0, "sort": 1,
        "enabled": true, "loged": false, "matchRestful": false,
        "handle": "{\"loadBalance\":\"random\",\"retry\":3,\"timeout\":3000}",
        "ruleConditions": [
            {"paramType": "uri", "operator": "=", "paramName": "/", "paramValue": "/http/order"}
        ]
    })
}

/// A snapshot redaction for an id the test knows: it fails unless the value is `id`, and
/// shows it as `shown`, so the snapshot states the relation (this rule's selector is the
/// one the test made) instead of hiding the value.
pub(crate) fn is_id(id: &str, shown: &'static str) -> insta::internals::Redaction {
    let id = id.to_owned();
    insta::dynamic_redaction(move |value, path| {
        assert_eq!(value.as_str(), Some(id.as_str()), "{shown} at {path}");
        shown
    })
}
