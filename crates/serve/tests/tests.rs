//! The server in the test's own process: started on a free port, read over raw HTTP, and
//! stopped while a page's event stream is still open.

mod server;
