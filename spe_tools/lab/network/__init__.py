"""Where the lab's pieces sit: network namespaces joined to the machine by veth pairs, and each piece's address."""
