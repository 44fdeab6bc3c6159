"""The hosts: the inventory, Ansible's playbooks, SSH, the hosts' clocks and processes, the lab of
namespace hosts; it imports only the core."""
