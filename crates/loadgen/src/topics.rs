//! The run's topics: fresh names, created before and deleted after.

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;

use crate::BenchError;
use crate::workload::Workload;

pub(crate) struct Topics {
    pub(crate) names: Vec<String>,
    admin: AdminClient<DefaultClientContext>,
    keep: bool,
}

impl Topics {
    pub(crate) fn create(config: &ClientConfig, workload: &Workload) -> Result<Topics, BenchError> {
        let admin: AdminClient<DefaultClientContext> = config
            .create()
            .map_err(BenchError::kafka("create an admin client"))?;
        let run = uuid::Uuid::new_v4().simple().to_string();
        let names: Vec<String> = (0..workload.topics.max(1))
            .map(|i| format!("spool-bench-{}-{i}", run.get(..8).unwrap_or(&run)))
            .collect();
        let new: Vec<NewTopic<'_>> = names
            .iter()
            .map(|name| {
                workload.topic_config.iter().fold(
                    NewTopic::new(
                        name,
                        workload.partitions_per_topic.max(1),
                        TopicReplication::Fixed(1),
                    ),
                    |topic, (key, value)| topic.set(key, value),
                )
            })
            .collect();
        let results = futures_executor::block_on(admin.create_topics(&new, &AdminOptions::new()))
            .map_err(BenchError::kafka("create topics"))?;
        for result in results {
            if let Err((topic, code)) = result {
                return Err(BenchError::TopicRefused {
                    topic,
                    code: format!("{code:?}"),
                });
            }
        }
        Ok(Topics {
            names,
            admin,
            keep: workload.keep_topics,
        })
    }
}

impl std::fmt::Debug for Topics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topics")
            .field("names", &self.names)
            .finish()
    }
}

impl Drop for Topics {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let _ = futures_executor::block_on(self.admin.delete_topics(&names, &AdminOptions::new()));
    }
}
