import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    params = StdioServerParameters(command="/work/main/target/debug/pflow-host", args=["mcp", "serve"], env={"PFLOW_HOME": sys.argv[1], "PATH": "/usr/bin:/bin"})
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            tools = await s.list_tools()
            print([t.name for t in tools.tools])
            res = await s.call_tool("workflow_validate", {"workflow": {"nodes": [{"id": "a", "type": "shel"}]}})
            print(res.is_error, json.dumps(res.structured_content)[:200])
            res = await s.call_tool("registry_find", {"query": "write a file"})
            print(json.dumps(res.structured_content)[:120])
            res = await s.call_tool("registry_describe", {"type": "shel"})
            print(res.is_error, json.dumps(res.structured_content)[:160])
            res = await s.call_tool("guide", {"topics": ["batch"]})
            print(res.content[0].text[:40])
asyncio.run(main())
