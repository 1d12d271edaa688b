//! Metric names, as `&str` constants (usable as match patterns).

/// `bandwidth`.
pub const BANDWIDTH: &str = "bandwidth";
/// `cost_per_mib`.
pub const COST_PER_MIB: &str = "cost_per_mib";
/// `capacity`.
pub const CAPACITY: &str = "capacity";
/// `connect`.
pub const CONNECT: &str = "connect";
/// `count`.
pub const COUNT: &str = "count";
/// `create`.
pub const CREATE: &str = "create";
/// `delete`.
pub const DELETE: &str = "delete";
/// `fixed_cost`.
pub const FIXED_COST: &str = "fixed_cost";
/// `hw_bandwidth`.
pub const HW_BANDWIDTH: &str = "hw_bandwidth";
/// `increment`.
pub const INCREMENT: &str = "increment";
/// `interruption`.
pub const INTERRUPTION: &str = "interruption";
/// `interruptions`.
pub const INTERRUPTIONS: &str = "interruptions";
/// `latency`.
pub const LATENCY: &str = "latency";
/// `level_latency`.
pub const LEVEL_LATENCY: &str = "level_latency";
/// `level_size`.
pub const LEVEL_SIZE: &str = "level_size";
/// `load_bandwidth`.
pub const LOAD_BANDWIDTH: &str = "load_bandwidth";
/// `lost_fraction`.
pub const LOST_FRACTION: &str = "lost_fraction";
/// `move`.
pub const MOVE: &str = "move";
/// `one_way`.
pub const ONE_WAY: &str = "one_way";
/// `parallelism`.
pub const PARALLELISM: &str = "parallelism";
/// `per_byte`.
pub const PER_BYTE: &str = "per_byte";
/// `per_call`.
pub const PER_CALL: &str = "per_call";
/// `per_fault`.
pub const PER_FAULT: &str = "per_fault";
/// `per_iteration`.
pub const PER_ITERATION: &str = "per_iteration";
/// `per_load`.
pub const PER_LOAD: &str = "per_load";
/// `per_migration`.
pub const PER_MIGRATION: &str = "per_migration";
/// `per_page`.
pub const PER_PAGE: &str = "per_page";
/// `per_read`.
pub const PER_READ: &str = "per_read";
/// `periodic_hz`.
pub const PERIODIC_HZ: &str = "periodic_hz";
/// `read_overhead`.
pub const READ_OVERHEAD: &str = "read_overhead";
/// `retouch_local`.
pub const RETOUCH_LOCAL: &str = "retouch_local";
/// `round_trip`.
pub const ROUND_TRIP: &str = "round_trip";
/// `switch`.
pub const SWITCH: &str = "switch";
/// `threshold`.
pub const THRESHOLD: &str = "threshold";
/// `tick_hz`.
pub const TICK_HZ: &str = "tick_hz";
/// `tlb_reach`.
pub const TLB_REACH: &str = "tlb_reach";
/// `transfer`.
pub const TRANSFER: &str = "transfer";
/// `wakeup`.
pub const WAKEUP: &str = "wakeup";
/// `core_speed`.
pub const CORE_SPEED: &str = "core_speed";
/// `steal`.
pub const STEAL: &str = "steal";
/// `slice`.
pub const SLICE: &str = "slice";
/// `switches`.
pub const SWITCHES: &str = "switches";
/// `time`.
pub const TIME: &str = "time";
/// `moves`.
pub const MOVES: &str = "moves";
/// `migration_cost`.
pub const MIGRATION_COST: &str = "migration_cost";
/// `migration_cost_cpu`.
pub const MIGRATION_COST_CPU: &str = "migration_cost_cpu";
/// `migration_cost_pages_follow`.
pub const MIGRATION_COST_PAGES_FOLLOW: &str = "migration_cost_pages_follow";
/// `migration_cost_pages_follow_cpu`.
pub const MIGRATION_COST_PAGES_FOLLOW_CPU: &str = "migration_cost_pages_follow_cpu";
/// `remote_memory_cost`.
pub const REMOTE_MEMORY_COST: &str = "remote_memory_cost";
/// `page_move`.
pub const PAGE_MOVE: &str = "page_move";
/// `pages_moved`.
pub const PAGES_MOVED: &str = "pages_moved";
/// `phase1_time`.
pub const PHASE1_TIME: &str = "phase1_time";
/// `phase2_time`.
pub const PHASE2_TIME: &str = "phase2_time";
/// `cpu_time`.
pub const CPU_TIME: &str = "cpu_time";
/// `execution_time`.
pub const EXECUTION_TIME: &str = "execution_time";
/// `response_time`.
pub const RESPONSE_TIME: &str = "response_time";
/// `speedup`.
pub const SPEEDUP: &str = "speedup";
/// `allocation`.
pub const ALLOCATION: &str = "allocation";
/// `migrations`.
pub const MIGRATIONS: &str = "migrations";
/// `makespan`.
pub const MAKESPAN: &str = "makespan";
/// `multiprogramming`.
pub const MULTIPROGRAMMING: &str = "multiprogramming";
/// `page_migrations`.
pub const PAGE_MIGRATIONS: &str = "page_migrations";
/// `burst_length`.
pub const BURST_LENGTH: &str = "burst_length";
/// `bursts`.
pub const BURSTS: &str = "bursts";
/// `lock_fraction`.
pub const LOCK_FRACTION: &str = "lock_fraction";
/// `shuffles`.
pub const SHUFFLES: &str = "shuffles";
/// `lock_before`.
pub const LOCK_BEFORE: &str = "lock_before";
/// `lock_after`.
pub const LOCK_AFTER: &str = "lock_after";
/// `overhead`.
pub const OVERHEAD: &str = "overhead";
/// `reduction`.
pub const REDUCTION: &str = "reduction";
/// `remote_share`.
pub const REMOTE_SHARE: &str = "remote_share";
/// `change`.
pub const CHANGE: &str = "change";

/// A metric's name as a person reads it on a chart: `per_call` a call's time is `call`,
/// `round_trip` `round trip`, `hw_bandwidth` `hw bandwidth` (the names are the JSON's and the
/// tables'; charts said `per_read` and `cost per_migration`).
pub fn words(name: &str) -> String {
    name.strip_prefix("per_").unwrap_or(name).replace('_', " ")
}
